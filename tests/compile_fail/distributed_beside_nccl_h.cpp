// Must compile: <tropical/distributed.hpp> after and before nccl.h's own declaration of ncclComm_t (the same
// typedef, repeated), and every element type and CountingTropical through the distributed calls.
typedef struct ncclComm* ncclComm_t;  // what nccl.h declares
#include "tropical/distributed.hpp"
typedef struct ncclComm* ncclComm_t;

void use(const tropical::EinsumPlan& plan, std::span<const float* const> f, float* fo,
         std::span<const std::int16_t* const> s, std::int16_t* so, std::span<const std::uint8_t* const> b,
         std::uint8_t* bo, std::span<const double* const> d, double* dv, double* dc, ncclComm_t comm) {
  tropical::einsum_distributed<tropical::MaxPlus, float>(plan, f, fo, comm);
  tropical::einsum_distributed<tropical::MinMax, std::int16_t>(plan, s, so, comm);
  tropical::einsum_distributed<tropical::AndOr, std::uint8_t>(plan, b, bo, comm, nullptr);
  tropical::einsum_distributed_counting<double>(plan, d, d, dv, dc, comm);
}
