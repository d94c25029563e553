"""Fakes of the services Palui talks to, served on loopback for tests."""
