"""`envdoctor fleet`: many environments compared at once, the majority against each node.

sources.py brings the nodes' reports (a folder, or a Ray cluster through ray_driver.py and
node_task.py), aggregate.py finds the majority configuration and each node's deviations, render.py
shows them. Ray is optional (the `fleet` extra of this project, or `pip install ray`) and imported only by the driver child.
"""
