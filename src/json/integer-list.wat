;; A JSON list of integers checked in WebAssembly (integer-list.ts says why): sixteen bytes at a
;; time where the list is plain (digits, "-", "," and a space after a comma), a byte at a time
;; through the grammar's states elsewhere. The list comes in windows; the state carries over.
;;
;; Memory: byte classes at 0 (256 bytes: 0 other, 1 space, 2 minus, 3 zero, 4 digit 1-9,
;; 5 comma, 6 close), transitions at 256 ([state * 8 + class] -> state; states 0 start, 1 value,
;; 2 minus, 3 zero, 4 digits, 5 after a number's spaces, 6 done, 7 failed), both written by
;; integer-list.ts; the window from 512.
;; Compiled by scripts/wasm.ts into integer-list-wasm.ts.
(module
  (memory (export "memory") 1)
  (global $state (mut i32) (i32.const 0))
  (global $last (mut i32) (i32.const 0))
  (global $commas (mut i32) (i32.const 0))

  ;; A new list: just after its "[".
  (func (export "reset")
    (global.set $state (i32.const 0))
    (global.set $last (i32.const 0))
    (global.set $commas (i32.const 0)))

  ;; Its items, once "scan" found its end: none for "[]", else one more than its commas.
  (func (export "count") (result i32)
    (select (i32.const 0) (i32.add (global.get $commas) (i32.const 1)) (i32.eqz (global.get $last))))

  ;; The window [from, to): the offset just after the list's "]" within it, -1 when the list is
  ;; not one of integers, -2 when it goes on past the window.
  (func (export "scan") (param $from i32) (param $to i32) (result i32)
    (local $i i32) (local $state i32) (local $last i32) (local $class i32) (local $commas i32)
    (local $retry i32) (local $entry i32)
    (local $v v128) (local $prev v128) (local $p v128) (local $pp v128)
    (local $digit v128) (local $comma v128) (local $space v128) (local $minus v128) (local $bad v128)
    (local.set $i (local.get $from))
    (local.set $state (global.get $state))
    (local.set $last (global.get $last))
    (local.set $commas (global.get $commas))
    (block $failed
      (loop $byte
        ;; In a value's place with sixteen bytes left: the vector loop, until a chunk it cannot vouch for.
        (if (i32.and (i32.eq (local.get $state) (i32.const 1))
                     (i32.and (i32.ge_u (local.get $i) (local.get $retry))
                              (i32.le_u (i32.add (local.get $i) (i32.const 16)) (local.get $to))))
          (then
            (local.set $entry (local.get $i))
            ;; As if after a comma: the state the loop starts in.
            (local.set $prev (i8x16.splat (i32.const 44)))
            (block $out
              (loop $chunk
                (br_if $out (i32.gt_u (i32.add (local.get $i) (i32.const 16)) (local.get $to)))
                (local.set $v (v128.load (local.get $i)))
                ;; Each byte's previous one and the one before it.
                (local.set $p (i8x16.shuffle 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 (local.get $prev) (local.get $v)))
                (local.set $pp (i8x16.shuffle 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 (local.get $prev) (local.get $v)))
                (local.set $digit (i8x16.lt_u (i8x16.sub (local.get $v) (i8x16.splat (i32.const 48))) (i8x16.splat (i32.const 10))))
                (local.set $comma (i8x16.eq (local.get $v) (i8x16.splat (i32.const 44))))
                (local.set $space (i8x16.eq (local.get $v) (i8x16.splat (i32.const 32))))
                (local.set $minus (i8x16.eq (local.get $v) (i8x16.splat (i32.const 45))))
                (local.set $bad
                  (v128.or
                    (v128.or
                      ;; a byte of another kind (other spaces and the end too: a byte at a time)
                      (v128.not (v128.or (v128.or (local.get $digit) (local.get $comma)) (v128.or (local.get $space) (local.get $minus))))
                      ;; a comma not after a digit
                      (v128.andnot (local.get $comma)
                        (i8x16.lt_u (i8x16.sub (local.get $p) (i8x16.splat (i32.const 48))) (i8x16.splat (i32.const 10)))))
                    (v128.or
                      (v128.or
                        ;; a space not after a comma
                        (v128.andnot (local.get $space) (i8x16.eq (local.get $p) (i8x16.splat (i32.const 44))))
                        ;; a minus not in a value's place
                        (v128.andnot (local.get $minus)
                          (v128.or (i8x16.eq (local.get $p) (i8x16.splat (i32.const 44))) (i8x16.eq (local.get $p) (i8x16.splat (i32.const 32))))))
                      ;; a digit after a leading zero
                      (v128.and (v128.and (local.get $digit) (i8x16.eq (local.get $p) (i8x16.splat (i32.const 48))))
                        (v128.not (i8x16.lt_u (i8x16.sub (local.get $pp) (i8x16.splat (i32.const 48))) (i8x16.splat (i32.const 10))))))))
                (if (v128.any_true (local.get $bad))
                  (then
                    ;; Bytes the vector loop cannot vouch for: a byte at a time for a while.
                    (local.set $retry (i32.add (local.get $i) (i32.const 64)))
                    (br $out)))
                (local.set $commas (i32.add (local.get $commas) (i32.popcnt (i8x16.bitmask (local.get $comma)))))
                (local.set $prev (local.get $v))
                (local.set $i (i32.add (local.get $i) (i32.const 16)))
                (br $chunk)))
            ;; The state after the chunks vouched for, from their last two bytes.
            (if (i32.gt_u (local.get $i) (local.get $entry))
              (then
                (local.set $class (i32.load8_u (i32.sub (local.get $i) (i32.const 1))))
                (local.set $state
                  (if (result i32) (i32.eq (local.get $class) (i32.const 45))
                    (then (i32.const 2))
                    (else
                      (if (result i32) (i32.lt_u (i32.sub (local.get $class) (i32.const 48)) (i32.const 10))
                        (then
                          (if (result i32)
                            (i32.and (i32.eq (local.get $class) (i32.const 48))
                                     (i32.ge_u (i32.sub (i32.load8_u (i32.sub (local.get $i) (i32.const 2))) (i32.const 48)) (i32.const 10)))
                            (then (i32.const 3))
                            (else (i32.const 4))))
                        ;; a comma, or a space after one
                        (else (i32.const 1))))))))))
        (if (i32.ge_u (local.get $i) (local.get $to))
          (then
            (global.set $state (local.get $state))
            (global.set $last (local.get $last))
            (global.set $commas (local.get $commas))
            (return (i32.const -2))))
        (local.set $class (i32.load8_u (i32.load8_u (local.get $i))))
        (if (i32.eq (local.get $class) (i32.const 5)) (then (local.set $commas (i32.add (local.get $commas) (i32.const 1)))))
        (local.set $last (local.get $state))
        (local.set $state (i32.load8_u offset=256 (i32.add (i32.shl (local.get $state) (i32.const 3)) (local.get $class))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br_if $byte (i32.lt_u (local.get $state) (i32.const 6)))
        (br_if $failed (i32.eq (local.get $state) (i32.const 7)))
        (global.set $last (local.get $last))
        (global.set $commas (local.get $commas))
        (return (local.get $i))))
    (i32.const -1)))
