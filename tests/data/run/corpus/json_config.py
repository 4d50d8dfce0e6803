# expect: run.exception error confirmed
# A config file that is not valid JSON (a trailing comma), read by the program.
import json, pathlib
path = pathlib.Path("config.json")
path.write_text('{"gamma": 0.99,}')
config = json.loads(path.read_text())
