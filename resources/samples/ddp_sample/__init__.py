"""The demo algorithm "ddp-sample"; see train.py. Copied without this file."""
