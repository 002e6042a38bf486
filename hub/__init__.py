"""JupyterHub for the course: ``python3 dev.py hub`` (see README, "JupyterHub")."""
