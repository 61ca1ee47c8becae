"""``sentinel vet``: measure a partition's nodes, name the bad ones, and act only when asked."""
