/**
 * `subclasses-of Shape`: BigSquare is loaded first, before its superclasses, so
 * its ancestry is unknown when its bytes are hooked and it must be selected once
 * prepared. Plain is no Shape and stays untraced.
 */
public class Shapes {
    abstract static class Shape {
        abstract int area();
    }

    static class Square extends Shape {
        final int side;

        Square(int side) {
            this.side = side;
        }

        int area() {
            return side * side;
        }
    }

    static class BigSquare extends Square {
        BigSquare() {
            super(10);
        }

        int area() {
            return super.area() + 1;
        }
    }

    static class Circle extends Shape {
        int area() {
            return 3;
        }
    }

    static class Plain {
        int area() {
            return 7;
        }
    }

    public static void main(String[] args) {
        int total = new BigSquare().area() + new Circle().area() + new Square(2).area() + new Plain().area();
        System.out.println("total " + total);
    }
}
