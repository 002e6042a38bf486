"""Grading beside zero-to-jupyterhub on Kubernetes: the image's role configuration (``role_config.py``);
the manifests and the Dockerfile are beside it (README.md)."""
