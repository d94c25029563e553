"""Tools as the model sees them: namespaced names, the per-turn offer, and the one place
every tool call goes through (`runner.CallRunner`)."""
