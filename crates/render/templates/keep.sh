echo "zmem: the decision is to keep $ZMEM_CONFIG: nothing to change" >&2
exit 0
