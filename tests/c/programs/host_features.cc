// C++ host code as a C++ compiler takes it (tests/c/test_c_cxx.py runs it and reads its output).
#include <hpvm.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

struct Noisy {
  std::string name;
  explicit Noisy(std::string n) : name(std::move(n)) { std::cout << "construct " << name << std::endl; }
  ~Noisy() { std::cout << "destroy " << name << std::endl; }
};
Noisy first("first");
Noisy second("second");

// The HPVM runtime started and stopped by a static object, as some host code does it.
struct Session {
  Session() { __hpvm__init(); std::cout << "session up" << std::endl; }
  ~Session() { __hpvm__cleanup(); std::cout << "session down" << std::endl; }
} session;

int runs = 0;  // every run starts with it 0

struct Shape {
  virtual ~Shape() = default;
  virtual double area() const = 0;
  virtual std::string name() const = 0;
};
struct Rect : Shape {
  double w, h;
  Rect(double w, double h) : w(w), h(h) {}
  double area() const override { return w * h; }
  std::string name() const override { return "rect"; }
};
struct Square : Rect {
  explicit Square(double s) : Rect(s, s) {}
  std::string name() const override { return "square"; }
};

template <typename T> T total(const std::vector<T> &v) {
  T sum{};
  for (const T &x : v) sum += x;
  return sum;
}

int parse(const std::string &text) {
  size_t used = 0;
  int value = std::stoi(text, &used);
  if (used != text.size()) throw std::invalid_argument("trailing characters in " + text);
  return value;
}

typedef struct __attribute__((__packed__)) { float *v; size_t bytes_v; float scale; } RootIn;

void scale_leaf(float *v, size_t bytes_v, float scale) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, v, 1, v);
  long i = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  v[i] *= scale;
}

void scale_root(float *v, size_t bytes_v, float scale) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, v, 1, v);
  void *leaf = __hpvm__createNodeND(1, scale_leaf, bytes_v / sizeof(float));
  for (int p = 0; p < 3; ++p) __hpvm__bindIn(leaf, p, p, 0);
}

int main(int argc, char **argv) {
  ++runs;
  std::cout << "runs " << runs << std::endl;
  try {
    parse("12x");
  } catch (const std::invalid_argument &e) {
    std::cout << "caught " << e.what() << std::endl;
  }
  std::vector<float> v;
  for (int i = 0; i < 16; ++i) v.push_back(static_cast<float>(i));
  std::cout << "totals " << total(v) << " " << total(std::vector<int>{1, 2, 3}) << std::endl;
  std::vector<Shape *> shapes{new Rect(2, 3), new Square(4)};
  for (Shape *s : shapes) std::cout << s->name() << " " << s->area() << std::endl;
  for (Shape *s : shapes) delete s;

  const std::string path = argv[1];
  {
    std::ofstream out(path);
    out << "scale 2.5\n";
  }
  std::ifstream in(path);
  std::string word;
  float scale = 0;
  in >> word >> scale;
  std::ostringstream said;
  said << word << "=" << scale;
  std::cout << said.str() << std::endl;
  if (argc > 2 && std::string(argv[2]) == "throw") throw std::runtime_error("asked to throw");

  RootIn args = {v.data(), v.size() * sizeof(float), scale};
  llvm_hpvm_track_mem(v.data(), args.bytes_v);
  __hpvm__wait(__hpvm__launch(0, scale_root, &args));
  llvm_hpvm_request_mem(v.data(), args.bytes_v);
  llvm_hpvm_untrack_mem(v.data());
  int bad = 0;
  for (int i = 0; i < 16; ++i) bad += v[i] != 2.5f * i;
  std::cout << "bad " << bad << std::endl;
  return bad;
}
