namespace geo {
class Shape {
public:
    // Area of the shape.
    double area() const {
        return w * h;
    }
    double w, h;
};
}
int main() { return 0; }
