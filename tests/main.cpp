#define BOOST_TEST_MODULE stoker
#include <boost/test/unit_test.hpp>
