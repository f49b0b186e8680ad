"""The rehearsal cluster's HTTP API: what kube-apiserver does between the socket and the store.

Pure request handling (routing, discovery, tables, patches, selectors, OpenAPI, auth, faults) lives
here; ``sim/server.py`` owns the sockets and threads, ``sim/store.py`` the objects.
"""
