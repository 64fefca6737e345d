#!/bin/sh
# Runs inside the debootstrapped tree (chroot) before `docker import`.
# Part of the base recipe: changing it changes the base image hash.
set -eu
: "${MIRROR:?}" "${SUITE:?}"
printf 'deb %s %s main\n' "$MIRROR" "$SUITE" > /etc/apt/sources.list
# Containers never start services through init scripts.
printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
chmod 755 /usr/sbin/policy-rc.d
# sshd refuses to start without its privilege-separation directory; /run is not a tmpfs here.
mkdir -p /run/sshd
chmod 755 /run/sshd
# Every container gets its own machine-id from nothing; an empty file is the Debian convention.
: > /etc/machine-id
# Small image: no apt lists, docs or man pages (apt works again after `apt-get update`).
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /usr/share/doc/* /usr/share/man/* \
       /usr/share/info/* /var/log/*.log /var/log/apt/* /tmp/* 2>/dev/null || true
