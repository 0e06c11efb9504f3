echo "zmem: nothing to apply: $ZMEM_WHY" >&2
exit 1
