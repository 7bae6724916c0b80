/** A shape. */
class Shape(val w: Int) {
    fun area(): Int {
        val a = w * w
        return a
    }
}

fun top(x: Int): Int = x + 1
