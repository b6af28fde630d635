"""What the nodes are and what runs on them: the sync of a backend's report into Node rows,
the nodes' probes and injected faults, the local runtimes and which image uses which, and
whose a job's processes are. Import its modules by name (``from resources.inventory import
runtimes``): this package re-exports nothing."""
