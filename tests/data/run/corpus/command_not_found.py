# expect: run.exception command-not-found confirmed
"""A script that encodes its evaluation video with a program this machine does not have: subprocess's
error reads like a missing file, and only the traceback says it was the program to run."""
import subprocess

subprocess.run(["envdoctor-corpus-video-encoder", "-i", "episode.mp4", "episode.gif"], check=True)
