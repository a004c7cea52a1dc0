#include "network.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "tropical/error.hpp"

namespace tropical::einsum_detail {

namespace {

[[noreturn]] void invalid(const std::string& what) { throw InvalidArgument("tropical: " + what); }

/// 'c' (appended piecewise: GCC 12's -Wrestrict misfires on "'" + std::string(1, c) + "'" at -O3).
std::string quote(char c) {
  std::string out(1, '\'');
  out.push_back(c);
  out.push_back('\'');
  return out;
}

bool is_letter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

std::string show_term(const Network& net, const std::vector<int>& term) {
  std::string out = net.letters ? "" : "[";
  for (std::size_t i = 0; i < term.size(); ++i) {
    if (!net.letters && i > 0) out += ", ";
    out += net.letters ? std::string(1, static_cast<char>(term[i])) : std::to_string(term[i]);
  }
  return net.letters ? out : out + "]";
}

}  // namespace

std::string Network::name(int label) const {
  return letters ? quote(static_cast<char>(label)) : std::to_string(label);
}

Network make_network(const std::vector<std::vector<int>>& inputs, const std::vector<int>& output,
                     const std::vector<std::vector<std::int64_t>>& shapes, bool letters) {
  Network net;
  net.letters = letters;
  if (inputs.empty()) invalid("einsum needs at least one operand");
  if (inputs.size() != shapes.size()) {
    invalid("einsum has " + std::to_string(inputs.size()) + " term(s) but " + std::to_string(shapes.size()) +
            " operand shape(s)");
  }
  std::map<int, int> index;
  std::map<int, std::int64_t> extent;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& term = inputs[i];
    if (term.size() != shapes[i].size()) {
      invalid("operand " + std::to_string(i) + " has " + std::to_string(shapes[i].size()) +
              " dimension(s) but its term " + show_term(net, term) + " names " + std::to_string(term.size()));
    }
    std::int64_t elements = 1;
    for (std::int64_t size : shapes[i]) {
      if (size > 0 && (__builtin_mul_overflow(elements, size, &elements) || elements > (std::int64_t{1} << 62))) {
        invalid("operand " + std::to_string(i) + " has more than 2^62 elements");
      }
    }
    for (std::size_t a = 0; a < term.size(); ++a) {
      const int label = term[a];
      const std::int64_t size = shapes[i][a];
      if (size <= 0) {
        invalid("label " + net.name(label) + " has dimension " + std::to_string(size) + " (operand " +
                std::to_string(i) + "); every label needs at least one index");
      }
      auto [it, fresh] = extent.emplace(label, size);
      if (!fresh && it->second != size) {
        invalid("label " + net.name(label) + " has size " + std::to_string(it->second) +
                " in one operand but " + std::to_string(size) + " in operand " + std::to_string(i));
      }
      if (index.emplace(label, static_cast<int>(net.labels.size())).second) {
        net.labels.push_back(label);
        net.sizes.push_back(size);
      }
    }
  }
  std::vector<int> seen;
  for (int label : output) {
    if (!index.contains(label)) invalid("output label " + net.name(label) + " appears in no operand");
    if (std::find(seen.begin(), seen.end(), label) != seen.end()) {
      invalid("output label " + net.name(label) + " appears twice in the output");
    }
    seen.push_back(label);
  }
  for (const auto& term : inputs) {
    std::vector<int> mapped;
    for (int label : term) mapped.push_back(index.at(label));
    net.inputs.push_back(std::move(mapped));
  }
  for (int label : output) net.output.push_back(index.at(label));
  net.shapes = shapes;
  return net;
}

void parse_equation(std::string_view equation, std::size_t count, std::vector<std::vector<int>>& inputs,
                    std::vector<int>& output) {
  std::string text;
  for (char c : equation) {
    if (!std::isspace(static_cast<unsigned char>(c))) text += c;
  }
  std::string quoted = "einsum equation '";
  quoted += equation;
  quoted += '\'';
  if (text.find('.') != std::string::npos) invalid(quoted + ": '...' is not supported; name every label");
  const std::size_t arrow = text.find("->");
  if (arrow != std::string::npos && text.find("->", arrow + 2) != std::string::npos) {
    invalid(quoted + " has more than one '->'");
  }
  const std::string left = text.substr(0, arrow);
  inputs.assign(1, {});
  for (char c : left) {
    if (c == ',') {
      inputs.emplace_back();
    } else if (!is_letter(c)) {
      invalid(quoted + ": label " + quote(c) + " is not a letter");
    } else {
      inputs.back().push_back(static_cast<unsigned char>(c));
    }
  }
  if (inputs.size() != count) {
    invalid(quoted + " has " + std::to_string(inputs.size()) + " operand(s) but " + std::to_string(count) +
            " were given");
  }
  output.clear();
  if (arrow != std::string::npos) {
    for (char c : text.substr(arrow + 2)) {
      if (!is_letter(c)) invalid(quoted + ": output label " + quote(c) + " is not a letter");
      output.push_back(static_cast<unsigned char>(c));
    }
  } else {  // numpy's implicit output: the labels seen once, in alphabetical order
    std::map<int, int> counts;
    for (const auto& term : inputs) {
      for (int label : term) ++counts[label];
    }
    for (auto [label, n] : counts) {
      if (n == 1) output.push_back(label);
    }
  }
}

}  // namespace tropical::einsum_detail
