"""Runs inside the sandbox, under the sandbox's own Python: standard library only, nothing of
Palui. Bound read-only into the sandbox at /opt/palui."""
