#!/bin/sh
# A host of `make demo` (scripts/demo): it enrolls with kmemd on the
# machine running QEMU (10.0.2.2) using the fleet's enrollment secret,
# then runs kmem-agent with the certificate it got, loading kmemctl.ko,
# and stays in the fleet until QEMU is stopped. Each policy kmemd sends is
# logged as it is enacted, with the mitigations' states. A policy named bad
# stands for a harmful change: once it is enacted the guest makes a soft
# lockup (kmt_lockup spinning with preemption off, watchdog_thresh 1), once.
# Needs tests/vm/run --net --userland BUILD --files DIR (DIR/ca.crt,
# DIR/secret, DIR/keys: the signer's public key) and --env VM_HOST=,
# KMEMD_PORT=.
. /tests/lib.sh

command -v kmem-agent >/dev/null || skip "no kmem-agent in this guest (tests/vm/run --userland)"
[ -r /host/secret ] || skip "no /host/secret (tests/vm/run --files)"
net_up
mod_loaded kmemctl && unload_mod kmemctl

W=/tmp/fleet
rm -rf $W
mkdir -p $W/pki
chmod 755 $W
cd $W
cp /host/ca.crt pki/
kmemctl enroll -s "10.0.2.2:$KMEMD_PORT" -C pki/ca.crt -S /host/secret -n "$VM_HOST" -o pki ||
	die "enrollment refused"
log "enrolled: pki/$VM_HOST.crt"
start_agent "$VM_HOST" "10.0.2.2:$KMEMD_PORT" $W/pki /host/keys "" "[labels]
role = demo"
await 120 grep -q "report [0-9]* acknowledged" agent.log || agent_fail "kmemd never acknowledged a report"
log "reporting to kmemd at 10.0.2.2:$KMEMD_PORT"
load_mod kmt_lockup
# what arrives from kmemd, as it is enacted
seen=0
harmed=
while sleep 2; do
	n=$(grep -c "from kmemd accepted" agent.log || true)
	[ "$n" != "$seen" ] || continue
	seen=$n
	sleep 2
	kmemctl status >status.txt 2>&1 || continue
	log "$(grep "from kmemd accepted" agent.log | tail -1 | sed 's/.*\(policy .*\) from.*/\1/');" \
		"$(grep -E '^(rstat-yield|usercopy-fastpath) ' status.txt | awk '{ printf "%s %s; ", $1, $2 }')"
	if [ -z "$harmed" ] && grep "from kmemd accepted" agent.log | tail -1 | grep -q "policy bad"; then
		harmed=1
		log "running policy bad: a soft lockup follows, as a harmful change would make"
		thresh=$(cat /proc/sys/kernel/watchdog_thresh)
		echo 1 >/proc/sys/kernel/watchdog_thresh
		echo 6 >/sys/kernel/kmt_lockup/spin
		echo "$thresh" >/proc/sys/kernel/watchdog_thresh
		sleep 2
		kmemctl status >status.txt 2>&1 || true
		log "after the lockup: $(grep -E '^(rstat-yield|usercopy-fastpath) ' status.txt |
			awk '{ printf "%s %s; ", $1, $2 }')"
	fi
done
