"""What several test modules share, beside the fixtures of tests/conftest.py: things built by hand (SB3
model files, pickles, wheels, a report), the Pythons found on this machine, and assertions that hold for
more than one command. A test module imports from here, never from another test module."""
