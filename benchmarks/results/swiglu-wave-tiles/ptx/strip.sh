# the code part of a PTX file from probe.py: its debug sections and the labels they number dropped
sed "/\.section\s*\.debug/,\$d" "$1" | grep -v "^\$L__tmp[0-9]*:$"
