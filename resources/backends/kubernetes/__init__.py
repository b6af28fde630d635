"""The Kubernetes backend: jobs as objects of the cluster's engine (Volcano), through its
API (see backend.py; render.py builds the objects, status.py reads them back)."""
