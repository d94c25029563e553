"""Scheduled jobs: schedules (parsing, words, due times), the scheduler, the /jobs cards."""
