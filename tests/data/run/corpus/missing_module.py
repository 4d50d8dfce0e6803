# expect: run.exception missing-module likely
# A dependency the program imports that is not installed in this interpreter.
import wandb_tracking_client
