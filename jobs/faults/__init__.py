"""Fault tolerance (SPEC F1–F6, Q6): prechecks, inspection, recovery, watches."""
