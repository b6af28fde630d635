"""Notifications (SPEC I4): job events told to their owners by email, signed webhooks and chat.

The job's lifecycle tags the events worth telling (``JobEvent.notice``). ``scan`` reads the
tagged events past a mark and makes one ``Delivery`` per event, channel and place, once
(a unique key), in the transaction that moves the mark; ``send`` delivers each in a Celery
task of its own, with retries and backoff. Nothing here runs in a request or in the
admission pass: a slow or failing endpoint slows nothing but its own deliveries.
"""
