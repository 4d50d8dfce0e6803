# expect: run.error-message pythonhome confirmed
# A job script that exports the PYTHONHOME of a Python that is no longer installed.
export PYTHONHOME=/opt/python-3.8-removed
exec "$PYTHON" -c "import torch"
