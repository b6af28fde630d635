"""The catalog: its kinds of item and their addresses, where items appear inside a job
(mounts), whose storage folder is whose, and the demo catalog. Import its modules by name
(``from resources.catalog import mounts``): this package re-exports nothing."""
