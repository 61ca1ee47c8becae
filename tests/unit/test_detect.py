"""Which OFI providers detection keeps, and why it drops the others."""

from __future__ import annotations

from sentinel.site.detect import usable_ofi_providers

# fi_info's own words for a provider without a device (libfabric 1.17)
FI_INFO = """#!/bin/sh
case "$*" in
  -l) for p in tcp verbs udp; do printf '%s:\\n    version: 117.0\\n' $p; done ;;
  "-p verbs") echo 'fi_getinfo: -61 (No data available)' >&2; exit 1 ;;
  *) echo "provider: ${2}" ;;
esac
"""


def test_listed_providers_are_probed_and_kept_in_order(tmp_path):
    fi_info = tmp_path / "fi_info"
    fi_info.write_text(FI_INFO)
    fi_info.chmod(0o755)
    dropped: list[str] = []
    usable = usable_ofi_providers(str(fi_info), ("udp", "verbs", "psm3", "tcp"), {},
                                  dropped)
    assert usable == ["udp", "tcp"]
    assert dropped == ["ofi-verbs: provider verbs has no usable fabric here "
                       "(fi_info -p verbs: fi_getinfo: -61 (No data available))"]


def test_no_fi_info_no_provider():
    assert usable_ofi_providers(None, ("tcp",)) == []
