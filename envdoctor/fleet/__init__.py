"""`envdoctor fleet`: many environments compared at once, the majority against each node.

sources.py says where the nodes' reports are (a folder, files, or a Ray cluster through ray_driver.py
and node_task.py), nodes.py reads one report down to what the fleet keeps of it, stream.py spreads that
over the CPUs, aggregate.py finds the majority configuration and groups the nodes by how they deviate,
render.py shows them. Ray is optional (the `fleet` extra of this project, or `pip install ray`) and
imported only by the driver child.
"""
