<?php
/** A shape. */
class Shape {
    public function area() {
        $a = $this->w * $this->h;
        return $a;
    }
}
function top($x) { return $x + 1; }
