"""What kube-apiserver's ``ValidateObjectMeta`` refuses in an object's name, per kind, in its words.

Transcribed from apimachinery (pkg/api/validation/objectmeta.go ``ValidateObjectMetaAccessor``: an empty name is
``Required value: name or generateName is required``, else each message of the kind's name function is an
``Invalid value``; pkg/api/validation/generic.go ``NameIsDNSSubdomain``; pkg/util/validation/validation.go
``IsDNS1123Subdomain``: ``MaxLenError(253)`` then ``RegexError(dns1123SubdomainErrorMsg, dns1123SubdomainFmt,
"example.com")``) and the kinds' validators: ``ValidateConfigMapName``, ``ValidateSecretName``, ``ValidatePodName``
(pkg/apis/core/validation/validation.go) and ``ValidateDeploymentName``, ``ValidateReplicaSetName``
(pkg/apis/apps/validation/validation.go) are all ``NameIsDNSSubdomain``. Other kinds are not judged here.
"""

from __future__ import annotations

import re
from typing import Any

from vllm_remedy.sim.api.config_validation import FieldError

SUBDOMAIN_MAX = 253  # DNS1123SubdomainMaxLength
_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
SUBDOMAIN_FMT = _LABEL_FMT + r"(\." + _LABEL_FMT + ")*"
_SUBDOMAIN = re.compile(SUBDOMAIN_FMT)
SUBDOMAIN_MESSAGE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                     "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                     f"validation is '{SUBDOMAIN_FMT}')")
#: The resources whose name function is ``NameIsDNSSubdomain``.
SUBDOMAIN_NAMED = frozenset({"configmaps", "secrets", "pods", "deployments.apps", "replicasets.apps"})


def subdomain_errors(name: str) -> list[str]:
    """``IsDNS1123Subdomain``: why ``name`` is no lowercase RFC 1123 subdomain (empty: it is one)."""
    errs = []
    if len(name.encode()) > SUBDOMAIN_MAX:
        errs.append(f"must be no more than {SUBDOMAIN_MAX} characters")
    if not _SUBDOMAIN.fullmatch(name):
        errs.append(SUBDOMAIN_MESSAGE)
    return errs


def errors(resource_key: str, obj: dict[str, Any]) -> list[FieldError]:
    """The ``metadata.name`` errors of ``obj`` for its resource (none for a resource not judged here)."""
    if resource_key not in SUBDOMAIN_NAMED:
        return []
    name = str((obj.get("metadata") or {}).get("name") or "")
    if not name:
        return []  # a POST without a name is answered before validation (writes.py), generateName filled earlier
    return [FieldError("Invalid", "metadata.name", msg, name) for msg in subdomain_errors(name)]
