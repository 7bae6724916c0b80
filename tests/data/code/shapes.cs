namespace Geo {
/// A shape.
public class Shape {
    public double Area() {
        return W * H;
    }
    public Shape(int w) { W = w; }
}
interface IThing { void Go(); }
}
