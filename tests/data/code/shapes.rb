# A shape.
module Geo
  class Shape
    def area
      a = w * h
      a
    end
  end
end
def top(x)
  x + 1
end
