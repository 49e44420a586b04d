#!/bin/bash
# test_inspect.sh BUILD_DIR: lsmfs-inspect on a real filesystem, beside the
# mount and unmounted.  Every figure it prints is checked against the
# mounted tree or the disks (sizes, chunk counts, chunk files and their
# lengths, entry names, inode count, bytes per disk and in total, the
# filesystem UUID mkfs printed); --json output must parse and agree; the
# commands must not change one byte of the disks; the lifetime write totals
# must grow across unmounts and mounts.  Then the store is damaged on
# purpose (tests/fsck's store_edit): what does not decode is shown in hex
# and nothing crashes; a chunk record that names its section is followed
# there, one naming a section past the count is said to be damaged; a
# file with two copies shows both, and a stale one.  Exit codes: 0, 1 (no
# such path), 8 (not lsmfs), 16.
# An empty directory given as a disk is said to be one (a disk not
# mounted?) by lsmfs, fsck.lsmfs, lsmfs-disk and lsmfs-inspect alike.
NAME=test_inspect
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"
EDIT=$B/tests/fsck/store_edit
D="$T/d1:$T/d2"
CHUNK=65536

# insp ARGS...: run lsmfs-inspect; its stderr goes to ours, and a sanitizer
# report or a death by signal is a failure whatever the exit code.
insp() {
	"$INSPECT" "$@" 2>"$T/stderr"
	local rc=$?
	cat "$T/stderr" >&2
	grep -qE 'Sanitizer|runtime error' "$T/stderr" && fail "lsmfs-inspect $*: sanitizer report"
	((rc >= 128)) && fail "lsmfs-inspect $*: killed by signal $((rc - 128))"
	return $rc
}
# json_get EXPR < JSON: print a Python expression over the parsed object d.
json_get() { python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
unmount() {
	fusermount3 -u "$M" || { echo "unmount failed" >&2; exit 1; }
	for _ in $(seq 50); do grep -q " $M " /proc/self/mountinfo || break; sleep 0.1; done
	# The daemon still closes its store after the unmount (the lifetime
	# totals' last edit); it holds disk 1's lock until it has exited.
	flock -w 10 "$T/d1/.lsmfs/lock" true || fail "the daemon did not exit within 10 s of unmount"
}

mkdir -p "$T/d1" "$T/d2" "$M"
mkfs_out=$("$MKFS" --chunk-size $CHUNK "$T/d1" "$T/d2") || { echo "mkfs failed" >&2; exit 1; }
uuid=$(grep -oE '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}' <<<"$mkfs_out" | head -1)
[[ -n $uuid ]] || fail "mkfs printed no UUID: $mkfs_out"
user_mkfs=$(insp --json "$D" levels | json_get 'd["lifetime"]["user_bytes"]')
[[ $user_mkfs -gt 0 ]] || fail "after mkfs: lifetime user bytes $user_mkfs, want > 0"
"$LSMFS" "$D" "$M" || { echo "mount failed" >&2; exit 1; }
mkdir -p "$M/a/b" "$M/c"
echo hello > "$M/a/small"
head -c 300000 /dev/urandom > "$M/a/b/big"
head -c 70000 /dev/urandom > "$M/c/two"
ln -s ../small "$M/a/sym"
mkfifo "$M/a/fifo"
for i in $(seq 30); do echo "$i" > "$M/c/f$i"; done
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.colour", b"green")' "$M/a/small" ||
	fail "setxattr through the mount"
sync

# check_stat PATH: stat's size, chunk count and chunk files against the tree.
check_stat() {
	local when=$1 p=$2 out size n=0 sum=0 path len
	size=$(stat -c %s "$M$p" 2>/dev/null || echo "${sizes[$p]}")
	out=$(insp "$D" stat "$p") || fail "$when: stat $p: exit $?: $out"
	grep -q "size $size," <<<"$out" || fail "$when: stat $p: size is not $size: $out"
	while read -r path len; do
		n=$((n + 1)); sum=$((sum + len))
		[[ -f $path && $(stat -c %s "$path") == "$len" ]] || fail "$when: $p: chunk file $path is not $len bytes"
	done < <(sed -nE 's/^  chunk [0-9]+: section [0-9]+, disk [0-9]+: (.*) ([0-9]+) bytes$/\1 \2/p' <<<"$out")
	[[ $n == $(((size + CHUNK - 1) / CHUNK)) ]] || fail "$when: stat $p shows $n chunks for $size bytes: $out"
	[[ $sum == "$size" ]] || fail "$when: $p: chunk lengths sum to $sum, not $size"
	[[ $(insp --json "$D" stat "$p" | json_get '(d["size"], len(d["chunks"]), d["chunk_bytes_on_disks"])') == "($size, $n, $sum)" ]] ||
		fail "$when: --json stat $p disagrees with the text"
}

check_all() { # WHEN: every command against the tree (mounted) or what it was
	local when=$1 out rc
	# super: the UUID mkfs printed, on both disks and in the store
	out=$(insp "$D" super) || fail "$when: super: exit $?: $out"
	[[ $(grep -c "filesystem UUID $uuid" <<<"$out") == 3 ]] || fail "$when: super does not show $uuid on both disks and the store: $out"
	grep -q "disk 1 of 2" <<<"$out" || fail "$when: super: no 'disk 1 of 2': $out"
	grep -q "chunk size $CHUNK" <<<"$out" || fail "$when: super: chunk size: $out"
	grep -qE "next inode [0-9]+" <<<"$out" || fail "$when: super: no next inode: $out"
	[[ $(insp "$D" super --json | json_get '[x["fs_uuid"] for x in d["disks"]] + [d["store_info"]["fs_uuid"]]') == "['$uuid', '$uuid', '$uuid']" ]] ||
		fail "$when: super --json: not $uuid everywhere"
	# stat: the chunked files, by path, and a file by inode number
	check_stat "$when" /a/b/big
	check_stat "$when" /c/two
	check_stat "$when" /a/b/../../c/./two
	out=$(insp "$D" stat "$ino_small") || fail "$when: stat by inode: exit $?"
	grep -q "inline data: 6 bytes" <<<"$out" && grep -q "xattr user.colour: 5 bytes" <<<"$out" ||
		fail "$when: stat $ino_small (a/small): $out"
	insp "$D" stat /a/sym | grep -q 'target "../small"' || fail "$when: symlink target not shown"
	insp "$D" stat /a/fifo | grep -q "^inode $ino_fifo: fifo, mode 0644" || fail "$when: stat /a/fifo"
	# ls: the names and inodes the mount listed
	for d in /a /c /; do
		out=$(insp "$D" ls "$d") || fail "$when: ls $d: exit $?"
		[[ $(awk '{print $1 "/" $4}' <<<"$out" | sort | tr '\n' ' ') == "${listing[$d]}" ]] ||
			fail "$when: ls $d shows '$(awk '{print $1 "/" $4}' <<<"$out" | sort | tr '\n' ' ')', want '${listing[$d]}'"
		[[ $(insp --json "$D" ls "$d" | json_get 'len(d["entries"])') == $(wc -l <<<"$out") ]] ||
			fail "$when: ls --json $d: not as many entries as the text"
	done
	# keys: one I per inode, one C per chunk, the fs info
	[[ $(insp "$D" keys I | grep -c '^I ') == "$inodes" ]] || fail "$when: keys I does not list $inodes inodes"
	[[ $(insp "$D" keys C "$ino_big" | grep -c "^C $ino_big [0-9]* -> chunk record: section [0-9]*\( (named)\)\? on disk [01]\(, length [0-9]*\(, [0-9]* checksums of 4096 bytes\(, in write\)\?\|, in write, no checksums\)\?\)\?$") == 5 ]] ||
		fail "$when: keys C $ino_big: not 5 chunk records"
	insp "$D" keys M | grep -q "^M fs -> .*uuid $uuid" || fail "$when: keys M: no fs info"
	# G (chunks in flux) is a key type like the others, though none is left
	# after a clean unmount.
	insp "$D" keys G "$ino_big" >/dev/null || fail "$when: keys G $ino_big: exit $?"
	[[ $(insp "$D" keys --raw 4d6e6578745f696e6f) == "$(insp "$D" keys M next_ino)" ]] ||
		fail "$when: keys --raw 4d6e6578745f696e6f is not keys M next_ino"
	[[ $(insp "$D" keys | wc -l) == $(insp --json "$D" keys | json_get 'd["count"]') ]] ||
		fail "$when: keys and keys --json do not count alike"
	# sections: bytes and files per disk and in all are the chunk files'
	out=$(insp "$D" sections) || fail "$when: sections: exit $?"
	local d want got files_all=0 bytes_all=0
	for d in 1 2; do
		want=$(find "$T/d$d/.lsmfs/sections" -type f -printf '%s\n' | awk '{s += $1; n++} END {print n + 0, "files,", s + 0}')
		got=$(sed -nE "s/^disk $((d - 1)) .* ([0-9]+ files, [0-9]+) bytes$/\1/p" <<<"$out")
		[[ $got == "$want" ]] || fail "$when: sections says disk $((d - 1)) holds '$got' bytes, the disk has '$want'"
	done
	files_all=$(find "$T/d1/.lsmfs/sections" "$T/d2/.lsmfs/sections" -type f | wc -l)
	bytes_all=$(find "$T/d1/.lsmfs/sections" "$T/d2/.lsmfs/sections" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
	grep -qx "total: $files_all chunk records, $files_all files, $bytes_all bytes" <<<"$out" ||
		fail "$when: sections total is not $files_all records and files, $bytes_all bytes: $(grep total: <<<"$out")"
	[[ $(grep -cE '^ +[0-9]+ +[01] ' <<<"$out") == 1024 ]] || fail "$when: sections does not list 1024 mapped sections"
	[[ $(insp --json "$D" sections | json_get '(d["total"]["bytes"], sum(s["bytes"] for s in d["map"]), len(d["map"]))') == "($bytes_all, $bytes_all, 1024)" ]] ||
		fail "$when: sections --json disagrees"
	# levels
	out=$(insp "$D" levels) || fail "$when: levels: exit $?"
	[[ $(grep -cE '^level [0-6]: [0-9]+ tables?, [0-9]+ bytes$' <<<"$out") == 7 ]] &&
		grep -qE '^write amplification so far: [0-9]+\.[0-9]{2} \(user [1-9][0-9]* bytes; log [0-9]+, flush [1-9][0-9]*, compaction [0-9]+, manifest [1-9][0-9]*\)$' <<<"$out" ||
		fail "$when: levels: $out"
	[[ $(insp --json "$D" levels | json_get 'sum(l["tables"] for l in d["levels"]) == sum(len(l["files"]) for l in d["levels"]) > 0') == True ]] ||
		fail "$when: levels --json: no tables, or counts that disagree"
	# --json parses for every command (the checks above read most)
	local c
	for c in super sections "stat /a/b/big" "stat /a/small" "ls /a" levels keys "keys D 1"; do
		# shellcheck disable=SC2086
		insp --json "$D" $c > "$T/j" || fail "$when: --json $c: exit $?"
		python3 -m json.tool "$T/j" >/dev/null 2>&1 || fail "$when: --json $c does not parse: $(head -c 300 "$T/j")"
	done
}

declare -A listing sizes
for d in /a /c /; do
	listing[$d]=$(cd "$M$d" && for f in $(ls -A); do echo "$(stat -c %i "$f")/$f"; done | sort | tr '\n' ' ')
done
ino_small=$(stat -c %i "$M/a/small")
ino_big=$(stat -c %i "$M/a/b/big")
ino_fifo=$(stat -c %i "$M/a/fifo")
ino_c=$(stat -c %i "$M/c")
inodes=$(find "$M" | wc -l)
sizes[/a/b/big]=$(stat -c %s "$M/a/b/big")
sizes[/c/two]=70000
sizes[/a/b/../../c/./two]=70000
check_all mounted
# The daemon is unharmed: it still writes and reads.
echo after > "$M/c/after" && [[ $(cat "$M/c/after") == after ]] || fail "the daemon fails after lsmfs-inspect ran beside it"
rm "$M/c/after"
user_mounted=$(insp --json "$D" levels | json_get 'd["lifetime"]["user_bytes"]')

unmount
hash_disks() { (cd "$T" && find d1 d2 -print0 | sort -z | xargs -0 -n 64 sh -c 'for f; do if [ -f "$f" ]; then sha256sum "$f"; else echo "d $f"; fi; done' sh) | sha256sum; }
before=$(hash_disks)
check_all unmounted
after=$(hash_disks)
[[ $before == "$after" ]] || fail "lsmfs-inspect changed the disks"

# Lifetime write totals: the close recorded the session's writes, and a
# second mount keeps counting from there.
user_closed=$(insp --json "$D" levels | json_get 'd["lifetime"]["user_bytes"]')
[[ $user_mounted -ge $user_mkfs && $user_closed -gt $user_mounted ]] ||
	fail "lifetime user bytes: mkfs $user_mkfs, mounted $user_mounted, unmounted $user_closed: want growth at the unmount"
"$LSMFS" "$D" "$M" || { echo "second mount failed" >&2; exit 1; }
for i in $(seq 20); do echo "more $i" > "$M/c/g$i"; done
unmount
user_again=$(insp --json "$D" levels | json_get 'd["lifetime"]["user_bytes"]')
[[ $user_again -gt $user_closed ]] || fail "lifetime user bytes did not grow over a second mount: $user_closed, then $user_again"
echo "test_inspect: lifetime user bytes: mkfs $user_mkfs, mounted $user_mounted, unmounted $user_closed, after a second mount $user_again"

# ---- a chunk whose record names its section (fs/SCHEMA.md "Chunk checksums") ----
# The daemon puts a chunk where there is room and its record names that
# section: stat, keys and sections find the file there, not where the
# hash puts it.  Chunk 1 of /a/b/big is moved to a section of the other
# disk and its record made to name it (both copies of the store); then to
# name section 5000, past the 1024, which is said to be damage.
be64() { printf '%016x' "$1"; }
le32() { printf '%08x' "$1" | sed 's/\(..\)\(..\)\(..\)\(..\)/\4\3\2\1/'; }
named() { # VALUE SECTION: chunk record VALUE (SCHEMA.md "Chunk checksums") naming SECTION
	local v=$1 f=$((0x${1:16:2}))
	if ((f & 8)); then
		echo "${v:0:28}$(le32 "$2")${v:36}"
	else
		echo "${v:0:16}$(printf %02x $((f | 8)))${v:18:10}$(le32 "$2")${v:28}"
	fi
}
put_both() { "$EDIT" "$T/d1/.lsmfs/meta" put "$1" "$2" && "$EDIT" "$T/d2/.lsmfs/meta" put "$1" "$2"; }
if [[ -x $EDIT ]]; then
	k=43$(be64 "$ino_big")$(be64 1)
	v=$("$EDIT" "$T/d1/.lsmfs/meta" get "$k")
	read -r hs hd hf < <(insp "$D" stat /a/b/big |
		sed -nE 's/^  chunk 1: section ([0-9]+), disk ([0-9]+): (.*) [0-9]+ bytes$/\1 \2 \3/p')
	ps=$(insp --json "$D" sections | json_get "[m['section'] for m in d['map'] if m['disk'] == 1 - $hd][0]")
	(((0x${v:16:2} & 2) != 0)) && [[ -f $hf ]] || fail "placed: chunk 1 of /a/b/big: record $v (want sums), file '$hf'"
	placed=$(named "$v" "$ps")
	put_both "$k" "$placed" || fail "placed: store_edit put C"
	pf=$T/d$((2 - hd))/.lsmfs/sections/$ps/$ino_big.1
	mkdir -p "${pf%/*}" && mv "$hf" "$pf"
	before=$(hash_disks)
	check_stat placed /a/b/big
	out=$(insp "$D" stat /a/b/big)
	grep -qx "  chunk 1: section $ps, disk $((1 - hd)): $pf $CHUNK bytes" <<<"$out" ||
		fail "placed: stat does not find chunk 1 in section $ps: $out"
	[[ $(insp --json "$D" stat /a/b/big | json_get '(lambda c: (c["section"], c["placed"], c["record_damaged"]))(d["chunks"][1])') == "($ps, True, False)" ]] ||
		fail "placed: --json stat: chunk 1 is not placed in section $ps"
	insp "$D" keys C "$ino_big" | grep -q "^C $ino_big 1 -> chunk record: section $ps (named) on disk $((1 - hd)), length $CHUNK, " ||
		fail "placed: keys C: chunk 1 does not name section $ps: $(insp "$D" keys C "$ino_big")"
	[[ $(insp --json "$D" sections | json_get "[(m['records'], m['files']) for m in d['map'] if m['section'] == $ps][0]") == "(1, 1)" ]] ||
		fail "placed: sections: section $ps does not count chunk 1's record and file"
	out=$("$FSCK" -n "$D" 2>&1) || fail "placed: fsck.lsmfs -n: exit $?: $out"
	[[ $before == "$(hash_disks)" ]] || fail "placed: lsmfs-inspect or fsck.lsmfs -n changed the disks"
	# A section past the 1024: said, the hash's section looked at.
	put_both "$k" "$(named "$v" 5000)" || fail "placed: store_edit put C 5000"
	before=$(hash_disks)
	out=$(insp "$D" stat /a/b/big)
	grep -qx "  chunk 1: section $hs (its record names section 5000, past the 1024; by the hash), disk $hd: $hf missing (a hole)" <<<"$out" ||
		fail "placed: a section past the count: stat: $out"
	[[ $(insp --json "$D" stat /a/b/big | json_get '(lambda c: (c["section"], c["section_named"], c["record_damaged"]))(d["chunks"][1])') == "($hs, 5000, True)" ]] ||
		fail "placed: a section past the count: --json stat"
	insp "$D" keys C "$ino_big" | grep -q "^C $ino_big 1 -> chunk record: names section 5000, past the 1024 sections, length $CHUNK, " ||
		fail "placed: a section past the count: keys C: $(insp "$D" keys C "$ino_big")"
	out=$("$FSCK" -n "$D" 2>&1)
	grep -q "^LSMFS-0516 inode $ino_big (/a/b/big) chunk 1: its record names section 5000, past the 1024 sections; no file in section $hs" <<<"$out" ||
		fail "placed: a section past the count: fsck.lsmfs -n: $out"
	[[ $before == "$(hash_disks)" ]] || fail "placed: lsmfs-inspect or fsck.lsmfs -n changed the disks"
	put_both "$k" "$v" && mv "$pf" "$hf" || fail "placed: putting chunk 1 back"
	echo "test_inspect: a chunk placed by its record: stat, keys and sections find it in section $ps; a section past the count said"
fi

# ---- a file with two copies (fs/SCHEMA.md "Copies") ----
# user.lsmfs.copies 2 on a directory: each chunk of a file made in it has
# copy 0 in the section its record names and copy 1 in the partner
# (s ^ 1) on the other disk.  stat shows a line per copy with its section,
# disk, file and length, --json a copies[] per chunk, keys C names copy
# 1's section and sections counts a record in both; a copy marked stale in
# the record (both store copies) is said so in all three, and its section
# no longer counts it.  The policy's value shows in stat's xattrs.
C2=$T/c2
mkdir -p "$C2/d1" "$C2/d2"
if "$MKFS" -q --chunk-size $CHUNK "$C2/d1" "$C2/d2" && "$LSMFS" "$C2/d1:$C2/d2" "$M"; then
	mkdir "$M/k" && setfattr -n user.lsmfs.copies -v 2 "$M/k" || fail "copies: setfattr"
	head -c 200000 /dev/urandom > "$M/k/f"
	ino_k=$(stat -c %i "$M/k/f")
	fusermount3 -u "$M"
	flock -w 10 "$C2/d1/.lsmfs/lock" true || fail "copies: the daemon did not exit"
	DC=$C2/d1:$C2/d2
	out=$(insp "$DC" stat /k/f)
	lines=$(sed -nE 's/^  chunk ([0-9]+) copy ([01]): section ([0-9]+), disk ([01]): (.*) ([0-9]+) bytes$/\1 \2 \3 \4 \5 \6/p' <<<"$out")
	[[ $(wc -l <<<"$lines") == 8 ]] || fail "copies: stat: want 8 lines (4 chunks, 2 copies each): $out"
	sum=0
	while read -r c i s d path len; do
		read -r s0 d0 < <(awk -v c="$c" '$1 == c && $2 == 0 { print $3, $4 }' <<<"$lines")
		[[ -f $path && $(stat -c %s "$path") == "$len" && $path == "$C2/d$((d + 1))/.lsmfs/sections/$s/$ino_k.$c" ]] ||
			fail "copies: stat: chunk $c copy $i: $path ($len bytes) is not there"
		((i == 0)) || [[ $s == $((s0 ^ 1)) && $d != "$d0" ]] ||
			fail "copies: stat: chunk $c copy 1 in section $s disk $d, copy 0 in $s0 disk $d0"
		sum=$((sum + len))
	done <<<"$lines"
	grep -qx "  4 chunks, $sum bytes on the disks" <<<"$out" && [[ $sum == 400000 ]] ||
		fail "copies: stat: want 400000 bytes on the disks, both copies: $out"
	grep -qx "  xattr user.lsmfs.copies: 1 bytes: 2" <<<"$(insp "$DC" stat /k)" ||
		fail "copies: stat /k does not show the policy's value: $(insp "$DC" stat /k)"
	[[ $(insp --json "$DC" stat /k/f | json_get '"\n".join("%d %d %d %d %s %d %s" % (c["chunk"], x["copy"], x["section"], x["disk"], x["path"], x["length"], x["stale"]) for c in d["chunks"] for x in c["copies"])') == "$(sed 's/$/ False/' <<<"$lines")" ]] ||
		fail "copies: --json stat: copies[] does not agree with the text: $(insp --json "$DC" stat /k/f)"
	read -r s0 d0 < <(awk '$1 == 0 && $2 == 0 { print $3, $4 }' <<<"$lines")
	read -r s1 d1 < <(awk '$1 == 0 && $2 == 1 { print $3, $4 }' <<<"$lines")
	insp "$DC" keys C "$ino_k" | grep -q "^C $ino_k 0 -> chunk record: section $s0 (named) on disk $d0, copy 1 in section $s1 on disk $d1, length $CHUNK, " ||
		fail "copies: keys C: chunk 0 does not name both copies: $(insp "$DC" keys C "$ino_k")"
	[[ $(insp --json "$DC" sections | json_get "[(m['records'], m['files']) for m in d['map'] if m['section'] in ($s0, $s1)]") == "[(1, 1), (1, 1)]" ]] ||
		fail "copies: sections: sections $s0 and $s1 do not count chunk 0's record and file each"
	# copy 1 of chunk 0 stale
	k=43$(be64 "$ino_k")$(be64 0)
	v=$("$EDIT" "$C2/d1/.lsmfs/meta" get "$k")
	for m in d1 d2; do "$EDIT" "$C2/$m/.lsmfs/meta" put "$k" "${v:0:38}02${v:40}" || fail "copies: store_edit put C"; done
	out=$(insp "$DC" stat /k/f)
	grep -q "^  chunk 0 copy 1: section $s1, disk $d1: .* $CHUNK bytes (stale: lacks data, not read)\$" <<<"$out" &&
		grep -q "; copies: 1 stale, 0 missing\$" <<<"$out" || fail "copies: a stale copy: stat: $out"
	[[ $(insp --json "$DC" stat /k/f | json_get '([x["stale"] for x in d["chunks"][0]["copies"]], d["copies_stale"])') == "([False, True], 1)" ]] ||
		fail "copies: a stale copy: --json stat"
	insp "$DC" keys C "$ino_k" | grep -q "^C $ino_k 0 -> chunk record: section $s0 (named) on disk $d0, copy 1 in section $s1 on disk $d1 (stale), " ||
		fail "copies: a stale copy: keys C: $(insp "$DC" keys C "$ino_k")"
	[[ $(insp --json "$DC" sections | json_get "[(m['records'], m['files']) for m in d['map'] if m['section'] == $s1]") == "[(0, 1)]" ]] ||
		fail "copies: a stale copy: sections still counts its record in section $s1"
	echo "test_inspect: a file with two copies: stat, --json, keys and sections show both, and a stale one"
else
	fail "copies: mkfs or mount"
fi

# ---- errors ----
insp >/dev/null 2>&1; [[ $? == 16 ]] || fail "no argument: want exit 16"
insp "$D" >/dev/null 2>&1; [[ $? == 16 ]] || fail "no command: want exit 16"
insp "$D" frobnicate >/dev/null 2>&1; [[ $? == 16 ]] || fail "unknown command: want exit 16"
insp --frob "$D" super >/dev/null 2>&1; [[ $? == 16 ]] || fail "unknown option: want exit 16"
insp "$D" stat >/dev/null 2>&1; [[ $? == 16 ]] || fail "stat without a path: want exit 16"
insp "$D" stat a/b >/dev/null 2>&1; [[ $? == 16 ]] || fail "stat of a relative path: want exit 16"
insp "$D" keys Q >/dev/null 2>&1; [[ $? == 16 ]] || fail "keys Q: want exit 16"
insp "$D" keys I x >/dev/null 2>&1; [[ $? == 16 ]] || fail "keys I x: want exit 16"
insp --raw 4 "$D" keys >/dev/null 2>&1; [[ $? == 16 ]] || fail "keys --raw 4 (odd hex): want exit 16"
insp "$D" stat /a/nothing >/dev/null 2>&1; [[ $? == 1 ]] || fail "a missing path: want exit 1"
insp "$D" stat /a/small/x >/dev/null 2>&1; [[ $? == 1 ]] || fail "a path through a file: want exit 1"
insp "$D" stat 999999 >/dev/null 2>&1; [[ $? == 1 ]] || fail "a missing inode: want exit 1"
insp "$D" ls /a/small >/dev/null 2>&1; [[ $? == 1 ]] || fail "ls of a file: want exit 1"
insp --help | grep -q "Exit status" || fail "--help does not document the exit status"
mkdir "$T/plain"
out=$(insp "$T/plain" super 2>&1); rc=$?
[[ $rc == 8 && $out == "lsmfs-inspect: $T/plain: "* && $(wc -l <<<"$out") == 1 ]] ||
	fail "a plain directory: exit $rc, want 8 and one line naming it: $out"
# An empty directory is most often the mount point of a disk that did not
# mount: every tool says so (issue 34), for one given alone or beside a
# disk; a directory holding something else is only "not an lsmfs disk".
[[ $out == *"$T/plain: an empty directory, not an lsmfs disk: is the disk that belongs there not mounted?"* ]] ||
	fail "an empty directory: lsmfs-inspect does not say it is empty: $out"
mkdir "$T/m2"
for tool in "$LSMFS @ $T/m2" "$B/tools/fsck/fsck.lsmfs -n @" "$B/tools/disk/lsmfs-disk @ status" \
	"$INSPECT @ super"; do
	for spec in "$T/plain" "$T/d1:$T/plain"; do
		out=$(${tool/@/$spec} 2>&1); rc=$?
		[[ $rc != 0 && $(wc -l <<<"$out") == 1 && $out == *"$T/plain: an empty directory, not an lsmfs disk: is the disk that belongs there not mounted?" ]] ||
			fail "${tool%% *} with $spec: want one line saying $T/plain is empty and may be a disk not mounted, got exit $rc: $out"
	done
done
mkdir "$T/other"; echo x > "$T/other/file"
out=$(insp "$T/other" super 2>&1)
[[ $out == "lsmfs-inspect: $T/other: not an lsmfs disk (no superblock)" ]] ||
	fail "a directory with other files: want 'not an lsmfs disk (no superblock)', got: $out"
out=$(insp "$T/d1" super 2>&1); rc=$?
[[ $rc == 8 ]] || fail "one disk of two: exit $rc, want 8: $out"
out=$(insp "$T/nowhere:$T/d2" super 2>&1); rc=$?
[[ $rc == 8 && $out == *"$T/nowhere"* ]] || fail "a missing disk: exit $rc, want 8 naming it: $out"

# ---- damage: shown, never a crash ----
if [[ -x $EDIT ]]; then
	META=$T/d1/.lsmfs/meta
	"$EDIT" "$META" put "49$(be64 "$ino_small")" ff00 >/dev/null || fail "store_edit put I"
	"$EDIT" "$META" put 5a01 00 >/dev/null || fail "store_edit put Z"
	"$EDIT" "$META" put 4d6673 00 >/dev/null || fail "store_edit put M fs"
	"$EDIT" "$META" put "50$(printf '%08x' 5)" 0102 >/dev/null || fail "store_edit put P 5"
	"$EDIT" "$META" put "47$(be64 "$ino_small")" "" >/dev/null || fail "store_edit put G"
	# An entry name of 256 bytes: not a D key (fs/format/schema.c key_types, as fsck says)
	long=44$(be64 "$ino_small")$(be64 3)$(printf 'a%.0s' {1..256} | od -An -v -tx1 | tr -d ' \n')
	"$EDIT" "$META" put "$long" 010000000000000008 >/dev/null || fail "store_edit put D, a long name"
	f1=$(insp --json "$D" keys D "$ino_c" | json_get '[k["key"] for k in d["keys"] if "\"f1\"" in k["text"]][0]')
	"$EDIT" "$META" put "$f1" 01 >/dev/null || fail "store_edit put D c/f1"
	chunk=$(insp "$D" stat /a/b/big | sed -nE 's/^  chunk 2: section [0-9]+, disk [0-9]+: (.*) [0-9]+ bytes$/\1/p')
	rm -f "$chunk"
	out=$(insp "$D" keys) || fail "damaged: keys: exit $?"
	grep -q "^I $ino_small -> ff00 (does not decode, 2 bytes)$" <<<"$out" || fail "damaged: keys does not show I $ino_small in hex"
	grep -q "^5a01 -> 00 (key does not parse)$" <<<"$out" || fail "damaged: keys does not show the key Z"
	grep -q "^${long:0:512}\.\.\. -> 010000000000000008 (key does not parse)$" <<<"$out" ||
		fail "damaged: keys does not show an entry key with a 256-byte name as a key that does not parse"
	grep -q "^M fs -> 00 (does not decode)$" <<<"$out" || fail "damaged: keys does not show M fs in hex"
	grep -q "^G $ino_small -> chunks in flux$" <<<"$out" || fail "keys does not decode G $ino_small"
	grep -q '^D '"$ino_c"' [0-9a-f]* "f1" -> 1 bytes (does not decode)$' <<<"$out" || fail "damaged: keys does not show the entry f1"
	insp --json "$D" keys | python3 -m json.tool >/dev/null 2>&1 || fail "damaged: keys --json does not parse"
	out=$(insp "$D" stat /a/small) || fail "damaged: stat /a/small: exit $?"
	grep -q "record of 2 bytes does not decode: ff00" <<<"$out" && grep -q "xattr user.colour: 5 bytes" <<<"$out" ||
		fail "damaged: stat /a/small: $out"
	out=$(insp "$D" ls /c) || fail "damaged: ls /c: exit $?"
	grep -qE '^ +\? \? +\? f1  \(entry does not decode\)$' <<<"$out" || fail "damaged: ls /c does not show f1 as damaged: $out"
	[[ $(wc -l <<<"$out") == 51 ]] || fail "damaged: ls /c: not 51 entries (two, f1..f30, g1..g20)"
	insp "$D" ls /a | grep -qE "^ +$ino_small file +\? small$" || fail "damaged: ls /a: small's size is not '?'"
	out=$(insp "$D" stat /a/b/big) || fail "damaged: stat /a/b/big: exit $?"
	grep -q "^  chunk 2: .* missing (a hole)$" <<<"$out" || fail "damaged: a deleted chunk file is not 'missing': $out"
	[[ $(insp --json "$D" stat /a/b/big | json_get '[c["length"] for c in d["chunks"]][2]') == -1 ]] ||
		fail "damaged: --json stat: a missing chunk's length is not -1"
	out=$(insp "$D" super) || fail "damaged: super: exit $?"
	grep -q "no filesystem info that decodes" <<<"$out" || fail "damaged: super does not say M fs is damaged: $out"
	out=$(insp "$D" sections) || fail "damaged: sections: exit $?"
	grep -qE '^ +5 +- ' <<<"$out" && grep -q "1 with no disk" <<<"$out" || fail "damaged: sections does not show section 5 unmapped"
	for c in super sections levels "stat /a/small" "ls /c"; do
		# shellcheck disable=SC2086
		insp --json "$D" $c | python3 -m json.tool >/dev/null 2>&1 || fail "damaged: --json $c does not parse"
	done
else
	fail "no $EDIT: cannot damage the store"
fi

finish
