"""Admission, the database side of the queue model (jobs.scheduling, which is pure).

``db``: load the state, run one pass under the cluster-wide lock, write its decisions back;
``queued``: the one builder of a job as the queue holds it (admission's rows and the form's
draft alike); ``prediction``: the form's "what if", from admission's own plan of the queue;
``words``: the core's reasons in the reader's language.
"""
