"""Settings: base.py holds everything; dev/test/prod only change defaults."""
