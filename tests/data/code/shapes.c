/* Adds two numbers. */
static int add(int a, int b) {
    int c = a + b;
    return c;
}
struct point { int x; int y; };
