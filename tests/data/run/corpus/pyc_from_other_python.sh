# expect: run.error-message pyc-magic confirmed
# An agent shipped as a .pyc compiled by Python 3.13, run here by another Python.
printf 'print("acting")\n' > agent.py
"$(pyenv root)"/versions/3.13.*/bin/python3.13 -m py_compile agent.py
rm agent.py
exec "$PYTHON" __pycache__/agent.cpython-313.pyc
