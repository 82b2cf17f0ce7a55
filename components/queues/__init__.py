"""Kueue: the tenants' queues, their Args, the pure plan of the queues from the pools, and the component."""
