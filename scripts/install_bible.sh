#!/usr/bin/env bash
# Install the two SWORD Bible modules behind the embedded corpus (task=bible_es_en, lm_bible_en) when missing.
set -euo pipefail
dir=/usr/share/sword/modules/texts/ztext
if [[ -f $dir/spaRV1909eb/ot.bzz && -f $dir/engKJV2006eb/ot.bzz ]]; then
  exit 0
fi
packages="sword-text-sparv sword-text-kjv"
if [[ $(id -u) -ne 0 ]]; then
  echo "The embedded corpus needs the Debian packages $packages. Install them as root:" >&2
  echo "  apt-get install --no-install-recommends $packages" >&2
  echo "or copy the modules somewhere and run with task.sword_dir=/path/to/modules/texts/ztext" >&2
  exit 1
fi
echo "installing $packages (the embedded Spanish–English Bible corpus)…"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages >/dev/null
