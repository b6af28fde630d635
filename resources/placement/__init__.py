"""Where a job may run and whether it can start: capacity arithmetic, the placement
answer, its words, and the availability table. Import its modules by name
(``from resources.placement import capacity``): this package re-exports nothing."""
