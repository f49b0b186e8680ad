"""The rehearsal cluster's control plane: deployment and ReplicaSet controllers, scheduler, kubelet.

All of one cluster's controllers run on a single worker thread (``manager.Manager``), fed by the
store's change feed and a timer heap in simulated time, so they never race one another; clients'
concurrent writes are absorbed by the store's ``mutate`` read-modify-write.
"""
