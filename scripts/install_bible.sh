#!/usr/bin/env bash
# Install the two SWORD Bible modules the shipped corpus is extracted from (`make data` regenerates it from them).
# Running the default tasks does not need them: frozen_sweep/data/verses/ holds their text.
set -euo pipefail
dir=/usr/share/sword/modules/texts/ztext
if [[ -f $dir/spaRV1909eb/ot.bzz && -f $dir/engKJV2006eb/ot.bzz ]]; then
  exit 0
fi
packages="sword-text-sparv sword-text-kjv"
if [[ $(id -u) -ne 0 ]]; then
  echo "Regenerating the shipped corpus needs the Debian packages $packages. Install them as root:" >&2
  echo "  apt-get install --no-install-recommends $packages" >&2
  echo "or copy the modules somewhere and run scripts/ship_verses.py --sword-dir /path/to/modules/texts/ztext" >&2
  exit 1
fi
echo "installing $packages (the source of the shipped Spanish–English Bible corpus)…"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages >/dev/null
