#!/bin/sh
# Issue #10, unload under load: three rounds (two on the debug kernel) of (load, bind, fio write
# + verify running on the disk): `rmmod rnvme` must be refused while fio holds the disk open, fio
# must go on unharmed (verify passes), and after fio has closed the disk rmmod must succeed and
# the disk go away. Also with a disk held open by a plain file descriptor and no I/O.
# fio closes the disk between its write and verify phases and between loops and opens it again
# (clear_io_state() in fio's backend), so an rmmod can land in that gap: it then succeeds, as it
# must with nobody holding the disk, and fio's next open fails with ENXIO. Such a round tested
# nothing: it is reported and repeated (at most twice per run), not failed.
. /lib/rnvme/lib.sh
. /lib/rnvme/faults.sh

# disk_held_open: some process (fio's job process, not its parent) has /dev/$DISK open.
disk_held_open() {
    for _fd in /proc/[0-9]*/fd/*; do
        [ "$(readlink "$_fd" 2>/dev/null)" = "/dev/$DISK" ] && return 0
    done
    return 1
}

errors=0
want=3
# Two rounds on the debug kernel (each reload probes, which is slow there).
[ "$DEBUG_KERNEL" = 1 ] && want=2
round=0 repeats=0
while [ "$round" -lt "$want" ]; do
    round=$((round + 1))
    fault_setup || break
    exec 3< /dev/$DISK
    if rmmod rnvme 2>/dev/null; then
        ffail "fault-unload-$round-refused-open-fd (rmmod succeeded with /dev/$DISK open)"
        exec 3<&-; break
    fi
    pass "fault-unload-$round-refused-open-fd"
    exec 3<&-
    fault_fio unload-$round 0 --ioengine=libaio --iodepth=16 --rw=randwrite --bs=4k --size=${VMB}M \
        --verify=crc32c --do_verify=1 --verify_fatal=1 --loops=2
    # Under load: fio has the disk open once I/O completes (it takes a while to start). fio closes
    # the disk some time before its process exits, and between its phases, so each attempt
    # first checks that a process still holds the disk open (looking again for up to 2 s while
    # nothing does), and a successful rmmod is a failure only if one still does.
    fault_fio_started
    refused=0 tries=0 unloaded=0 closed=0
    while kill -0 "$FIO_PID" 2>/dev/null && [ "$tries" -lt 5 ]; do
        if ! disk_held_open; then
            closed=$((closed + 1))
            [ "$closed" -le 20 ] || break
            sleep 0.1
            continue
        fi
        tries=$((tries + 1))
        if rmmod rnvme 2>/dev/null; then
            if disk_held_open; then
                ffail "fault-unload-$round-refused (rmmod succeeded while fio holds /dev/$DISK open)"
            else
                unloaded=1
                echo "fio closed /dev/$DISK during rmmod attempt $tries: unloaded after close"
            fi
            break
        fi
        refused=$((refused + 1))
        sleep 0.3
    done
    fault_fio_wait
    if [ "$unloaded" = 1 ] && [ "$repeats" -lt 2 ] &&
        grep -q "func=open(/dev/$DISK), error=No such device or address" "$FIO_OUT"; then
        # The gap between fio's phases (see the top): the module is gone, fio could not open
        # the disk again. Nothing was tested under load; the round is done again.
        echo "fault-unload-$round: rmmod ran while fio had the disk closed between its phases" \
            "(fio's next open: ENXIO); round repeated"
        repeats=$((repeats + 1)) round=$((round - 1))
        [ ! -e /sys/block/$DISK ] || ffail "fault-unload-repeat-disk-gone (/sys/block/$DISK)"
        continue
    fi
    errors=$((errors + FIO_ERRORS))
    [ "$refused" -gt 0 ] && pass "fault-unload-$round-refused ($refused rmmod attempts refused under load)" ||
        ffail "fault-unload-$round-refused (fio closed the disk before an rmmod attempt)"
    [ "$FIO_RC" = 0 ] && [ "$FIO_ERRORS" = 0 ] && pass "fault-unload-$round-fio-unharmed" ||
        ffail "fault-unload-$round-fio-unharmed (fio exit $FIO_RC, $FIO_ERRORS errors)"
    if [ "$unloaded" = 1 ] || rmmod rnvme; then
        pass "fault-unload-$round-after-close"
        [ ! -e /sys/block/$DISK ] && pass "fault-unload-$round-disk-gone" || ffail "fault-unload-$round-disk-gone"
    else
        ffail "fault-unload-$round-after-close (rmmod failed after fio closed the disk)"
        break
    fi
done
fault_result unload "$errors"
