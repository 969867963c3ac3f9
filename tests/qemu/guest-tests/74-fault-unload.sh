#!/bin/sh
# Issue #10, unload under load: three rounds (two on the debug kernel) of (load, bind, fio write
# + verify running on the disk): `rmmod rnvme` must be refused while fio holds the disk open, fio must go on unharmed
# (verify passes), and after fio has closed the disk rmmod must succeed and the disk go away.
# Also with a disk held open by a plain file descriptor and no I/O.
. /lib/rnvme/lib.sh
. /lib/rnvme/faults.sh

errors=0
rounds="1 2 3"
# Two rounds on the debug kernel (each reload probes, which is slow there).
[ "$DEBUG_KERNEL" = 1 ] && rounds="1 2"
for round in $rounds; do
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
    # Under load: fio has the disk open once I/O completes (it takes a while to start).
    fault_fio_started
    refused=0 tries=0
    while kill -0 "$FIO_PID" 2>/dev/null && [ "$tries" -lt 5 ]; do
        tries=$((tries + 1))
        if rmmod rnvme 2>/dev/null; then
            ffail "fault-unload-$round-refused (rmmod succeeded while fio runs)"; break
        fi
        refused=$((refused + 1))
        sleep 0.3
    done
    fault_fio_wait
    errors=$((errors + FIO_ERRORS))
    [ "$refused" -gt 0 ] && pass "fault-unload-$round-refused ($refused rmmod attempts refused under load)" ||
        ffail "fault-unload-$round-refused (fio ended before an rmmod attempt)"
    [ "$FIO_RC" = 0 ] && [ "$FIO_ERRORS" = 0 ] && pass "fault-unload-$round-fio-unharmed" ||
        ffail "fault-unload-$round-fio-unharmed (fio exit $FIO_RC, $FIO_ERRORS errors)"
    if rmmod rnvme; then
        pass "fault-unload-$round-after-close"
        [ ! -e /sys/block/$DISK ] && pass "fault-unload-$round-disk-gone" || ffail "fault-unload-$round-disk-gone"
    else
        ffail "fault-unload-$round-after-close (rmmod failed after fio closed the disk)"
        break
    fi
done
fault_result unload "$errors"
