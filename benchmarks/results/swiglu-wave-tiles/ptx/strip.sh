sed '/\.section\s*\.debug/,$d' "$1" | grep -v '^\$L__tmp[0-9]*:$'
