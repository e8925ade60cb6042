"""Test rigs: simulated tables, dealers and players, the scenario runner, the demo and a
Mosquitto harness.

The only package that imports ``simulators``. May import everything else of ours.
"""
