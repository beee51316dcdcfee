#!/bin/sh
# For tests/vm/builds.sh: the module's build file and where the kernel is,
# printed between markers on the console, and a record made from the build
# file. When /host/first is another boot's build file and the module ships
# the record made there, that record alone admits every mitigation with
# copies here.
. /tests/lib.sh

K=/sys/kernel/kmemctl
# the shipped records are the ones a kaslr boot made (tests/vm/builds.sh)
load_mod kmemctl
echo "KMEMCTL-BUILD-BEGIN"
echo "text $(awk '$3 == "_text" { print $1 }' /proc/kallsyms)"
cat $K/build
echo "KMEMCTL-BUILD-END"
echo "KMEMCTL-RECORD-BEGIN"
build_record <$K/build
echo "KMEMCTL-RECORD-END"

if [ -f /host/first ]; then
	first_id=$(sed -n 's/^build_id //p' /host/first)
	assert_eq "$(cat $K/records)" "$first_id $(uname -r) unchecked $(cat /host/kernel)" \
		"the shipped record"
	verified="off: verified: its code matches record $(echo "$first_id" | cut -c1-12) ($(uname -r), unchecked $(cat /host/kernel))"
	for id in $(sed -n 's/^func \([^ ]*\) .*/\1/p' $K/build | uniq); do
		assert_eq "$(cat $K/mitigations/$id/reason)" "$verified" "$id reason"
		log "$id: $verified"
	done
fi
unload_mod kmemctl
check_dmesg_clean
