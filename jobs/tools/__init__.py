"""Tools opened beside jobs: TensorBoard over a job's outputs (SPEC O9) and JupyterLab in a
development environment (O8), run by the local backend as one-replica workloads and reached
only through the console's proxy (``proxy.py``). ``service.py`` starts, checks and stops
them; ``access.py`` says who may reach one."""
