# expect: run.exception error confirmed
# A config key the program's own code expects and the file lacks.
config = {"learning_rate": 3e-4}
batch_size = config["batch_size"]
