"""Checks the end-to-end tests run as job commands; see check_env.py."""
