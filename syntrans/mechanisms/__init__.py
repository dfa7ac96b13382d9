"""One module per syntax method (the Mechanism interface in base.py; registry.py lists them in head order)."""
